"""evolution: population, operator registry, RL-weighted selection, engine loop, hall of fame, database.

    engine.py      the loop: shapes in order, rounds of ask -> evaluate -> tell with proposal and
                   evaluation overlapped, budgets, dedup, resume by deterministic replay
    evolve.py      EvolutionStrategy: islands, bandit-chosen operators, parents by fitness+novelty,
                   (mu + lambda) survivors with elites, ring migration, rewards
    population.py  DEAP fitness / individual (no deap.creator), hall of fame, survivors, migration
    registry.py    per-campaign operator registry (built-ins + import-path plug-ins) -> policy arms
    seeding.py     nearest-solved-shape and hand-picked seeds; seed pools of earlier campaigns
    db.py          the SQLite (WAL) campaign database
    campaign.py    campaign folders: create, open (also after a crash), run/resume, outputs
    report.py      status (`evogemm status`) and report.md
    progress.py    live rich progress and the campaign log
    bandit.py      operator-selection policies (uniform, UCB, Thompson, softmax policy gradient)
    parents.py     parent selection weighted by fitness and novelty
    strategies.py  alternative strategies: random search, Optuna TPE
"""
