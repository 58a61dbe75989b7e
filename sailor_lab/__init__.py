"""The measurement harness: what the benchmarks and experiments share (comparisons of named
configurations, named starting rewards, judge quality). It imports `sailor_jax`; the package
never imports it."""
