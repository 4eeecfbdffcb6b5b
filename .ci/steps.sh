# Step timing for the CI scripts (sourced): `step NAME` starts a step; at exit the wall time and
# the CPU time (user + system, of every process the step waited on) of every step is printed,
# also when one fails (`summary [RC]`, RC defaulting to `$?`). On two cores CI is bound by its
# total CPU time, so that is the column to read when a step is to be made cheaper.
timings=()
current=""
t_step=$SECONDS
t_start=$SECONDS
cpu_file=$(mktemp)
# Each lane's CPU total, for .ci/run to add up at the end (sourced from the repository root,
# after `lane` is set).
cpu_total_file=$PWD/target/ci-$lane.cpu
# `cpu`: seconds of CPU used so far by this shell's finished children (`times`' second line;
# `times` runs in this shell, not in a command substitution's subshell, whose children are not
# these).
cpu_now() {
  times >"$cpu_file"
  cpu=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); s += t[1] * 60 + t[2] } printf "%d", s }' "$cpu_file")
}
cpu_now
c_step=$cpu
c_start=$cpu
record() {
  cpu_now
  timings+=("$(printf '%6ds %6ds  %s' $((SECONDS - t_step)) $((cpu - c_step)) "$current")")
  c_step=$cpu
}
summary() {
  local rc=${1:-$?}
  [ -n "$current" ] && record
  printf '\n==== step times (%s): wall, CPU ====\n' "$lane"
  printf '%s\n' "${timings[@]}"
  cpu_now
  printf '%6ds %6ds  total%s\n' $((SECONDS - t_start)) $((cpu - c_start)) \
    "$([ "$rc" -eq 0 ] || echo " (FAILED, exit $rc)")"
  echo $((cpu - c_start)) >"$cpu_total_file" 2>/dev/null || true
  rm -f "$cpu_file"
}
step() {
  [ -n "$current" ] && record
  current="$*"
  t_step=$SECONDS
  printf '\n==== %s ====\n' "$*"
}

# `retry CMD…`: a download (apt, rustup) tried up to five times, 15 s, 30 s, … apart: a mirror's
# passing 503 must not fail CI (one did, on rustup's channel manifest).
retry() {
  local n=1
  until "$@"; do
    [ $n -lt 5 ] || return 1
    echo "retrying in $((15 * n)) s: $*" >&2
    sleep $((15 * n))
    n=$((n + 1))
  done
}

# The suites that drive the kernels (every backend against the reference, golden vectors,
# dtypes, views, the fused operations, the table path): what the emulated runs take. The rest
# test logic that is the same code on every CPU, and run natively.
kernel_suites=(--test backend_select --test backends --test element --test golden
  --test golden_scaling --test miri_smoke --test sinusoidal_variants --test mrope --test views
  --test fused --test backward --test quant --test shift --test stack --test table)
