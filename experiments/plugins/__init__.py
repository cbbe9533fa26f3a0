"""Documented examples of each kind of plug-in, runnable as they are.

Name them in a campaign YAML by import path, exactly as you would name your own module's:

    families: [sm90_cutlass, "experiments.plugins.example_family:SM90_COPY"]
    operators:
      - {name: "experiments.plugins.example_operator:TileNudge", prior: 1.0}
    selection:
      policy: "experiments.plugins.example_policy:EpsilonGreedy"
      params: {epsilon: 0.2}
      parents: {name: "experiments.plugins.example_parents:BestTwo"}
    strategy: {name: "experiments.plugins.example_strategy:HillClimb", params: {explore: 0.2}}

What each kind must be (a plug-in of the wrong kind is refused by `evogemm validate` with one
line naming the key):

- template family: a `templates.TemplateFamily` (or a function of no arguments returning one);
- operator: a class with an integer `arity` and `__call__(parents, ctx) -> list[Offspring]`;
- selection policy: a class built as `Class(arms, priors, **params)` with choose / update /
  probabilities / stats / state_dict / load_state_dict / warm_start (subclass
  `evolution.policy_base.OperatorPolicy` to get most of them);
- parent selection: a class built as `Class(**params)` with `select(candidates, k, rng, space)`;
- search strategy: a class with `ask(n)` and `tell(offspring, measurement)`, built per family as
  `Class(space, problem, seed, **params)` (or with a `build(ctx)` class method that takes the
  engine's `evolution.search.StrategyContext`);
- evaluator backend: a class built as `Class(families=..., **options)` with describe / baselines /
  evaluate / close (see `evaluator.api.Evaluator`).
"""
