# Step timing for the CI scripts (sourced): `step NAME` starts a step; at exit the wall time of
# every step is printed, also when one fails (`summary [RC]`, RC defaulting to `$?`).
timings=()
current=""
t_step=$SECONDS
t_start=$SECONDS
summary() {
  local rc=${1:-$?}
  [ -n "$current" ] && timings+=("$(printf '%6ds  %s' $((SECONDS - t_step)) "$current")")
  printf '\n==== step times (%s) ====\n' "$lane"
  printf '%s\n' "${timings[@]}"
  printf '%6ds  total%s\n' $((SECONDS - t_start)) "$([ "$rc" -eq 0 ] || echo " (FAILED, exit $rc)")"
}
step() {
  [ -n "$current" ] && timings+=("$(printf '%6ds  %s' $((SECONDS - t_step)) "$current")")
  current="$*"
  t_step=$SECONDS
  printf '\n==== %s ====\n' "$*"
}

# The suites that drive the kernels (every backend against the reference, golden vectors,
# dtypes, views, the fused operations, the table path): what the emulated runs take. The rest
# test logic that is the same code on every CPU, and run natively.
kernel_suites=(--test backend_select --test backends --test element --test golden
  --test golden_scaling --test miri_smoke --test sinusoidal_variants --test mrope --test views
  --test fused --test backward --test quant --test shift --test stack --test table)
