"""evolution: population, plug-in registries, RL-weighted selection, engine loop, hall of fame, database.

    engine.py       the loop: shapes in order, rounds of ask -> evaluate -> tell with proposal,
                    builds (prefetch) and timing overlapped; halls of fame; GPU utilisation
    budget.py       per-shape allocations and round sizes
    journal.py      proposals and measurements recorded as they happen, served back on resume
    shape_state.py  what the engine tracks about one shape
    reverify.py     the hall of fame re-measured interleaved with the vendor baselines
    plugins.py      every plug-in registry of a campaign (families, operators, policies, parent
                    selections, strategies, evaluator backends, LLM providers)
    search.py       the strategy registry, StrategyContext, one strategy per family (MultiFamily)
    evolve.py       EvolutionStrategy: islands, bandit-chosen operators, parent selection,
                    (mu + lambda) survivors with elites, ring migration, rewards
    strategies.py   alternative strategies: random search, Optuna TPE
    operators.py    per-campaign operator registry (built-ins + import-path plug-ins) -> policy arms
    policy_base.py  OperatorPolicy: arms, priors, statistics, persistence, warm start
    bandit.py       the policies (uniform, UCB, Thompson, softmax policy gradient) and their registry
    parents.py      parent selections (fitness + novelty, uniform) and their registry
    population.py   DEAP fitness / individual (no deap.creator), hall of fame, survivors, migration
    seeding.py      nearest-solved-shape seeds, family seed genomes, seed pools of earlier campaigns
    wave_seeds.py   one-wave seeds: the tiles whose grid fills the most SMs in one wave (sm90_lean, then
                    sm90_cutlass cooperative)
    vendor_seeds.py vendor-mirror seeds: the tile, cluster and split-K of the algorithm cuBLASLt ran at the
                    shape, in the campaign's families (and a full-wave mirror's twin without the cluster)
    db.py           the SQLite (WAL) campaign database (its tables: db_schema.py)
    rng.py          seeds derived from the campaign seed
"""
