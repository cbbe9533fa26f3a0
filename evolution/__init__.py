"""evolution: population, operator registry, RL-weighted selection, engine loop, hall of fame, database."""
