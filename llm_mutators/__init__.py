"""llm_mutators: LLM providers, prompt templates and LLM operators (implement genome.Operator)."""
