"""experiments: campaign YAML and its schema, the evogemm CLI, reports, export."""
