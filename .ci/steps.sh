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
