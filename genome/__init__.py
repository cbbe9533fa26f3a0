"""genome: what a kernel is (Genome), search spaces and their rules, classic variation operators."""

from .genome import Genome, Patch
from .problem import Problem
from .param_spec import SPACE_REVISION, ParamSpec
from .space import InvalidGenome, Rule, SearchSpace, ShapeRule, Violation
from .operators import (FamilyJump, ModelMutate, Offspring, Operator, OperatorContext, OperatorError, ParamCrossover, ParamMutate, RandomSample,
                        apply_operator, classic_operators)
from .registry import PluginError, Registry, check_params, class_with, describe_object, is_import_path, load_object

__all__ = [
    "Genome", "Patch", "Problem", "InvalidGenome", "ParamSpec", "Rule", "SearchSpace", "ShapeRule", "Violation",
    "SPACE_REVISION",
    "Offspring", "Operator", "OperatorContext", "ParamCrossover", "ParamMutate",
    "RandomSample", "FamilyJump", "ModelMutate", "OperatorError", "apply_operator", "classic_operators", "PluginError", "Registry", "check_params", "class_with", "describe_object", "is_import_path",
    "load_object",
]
