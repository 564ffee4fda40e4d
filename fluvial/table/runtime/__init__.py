"""The functions the planner's DataStream transformations run: compiled projections and filters, the group
aggregation, window aggregation and rank functions, sources and sinks. Plain DataStream functions over
fluvial's keyed state, so table jobs checkpoint, restore and rescale as every job does."""
