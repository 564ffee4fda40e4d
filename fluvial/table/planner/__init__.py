"""The planner: resolves expressions, builds logical plans, and translates them to DataStream transformations."""
