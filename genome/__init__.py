"""genome: what a kernel is (Genome), search spaces and their rules, classic variation operators."""

from .genome import Genome, Patch
from .problem import Problem
from .space import InvalidGenome, ParamSpec, Rule, SearchSpace, ShapeRule, Violation
from .families import family_registry, get_space
from .operators import (Offspring, Operator, OperatorContext, ParamCrossover, ParamMutate, RandomSample,
                        apply_operator, classic_operators)
from .registry import Registry, load_object

__all__ = [
    "Genome", "Patch", "Problem", "InvalidGenome", "ParamSpec", "Rule", "SearchSpace", "ShapeRule", "Violation",
    "family_registry", "get_space", "Offspring", "Operator", "OperatorContext", "ParamCrossover", "ParamMutate",
    "RandomSample", "apply_operator", "classic_operators", "Registry", "load_object",
]
