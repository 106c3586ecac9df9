#!/bin/bash
# Slurm HealthCheckProgram for GPU nodes (docs/fleet.md).
#
# Runs `greta smoke --profile health --device all --oneline`; when greta says FAIL (exit 1),
# cannot decide (exit 2: no GPU visible, no driver), or runs past its time, drains this node
# with greta's one line as the reason:
#     scontrol update NodeName=$SLURMD_NODENAME State=DRAIN Reason="greta: FAIL: health ..."
# When greta passes it leaves the node alone (it never resumes a node: an admin does, once the
# GPU is fixed; `scontrol update NodeName=N State=RESUME`).
#
# slurmd runs this as root with an almost empty environment (SLURMD_NODENAME only) and kills it
# after 60 s, so settings come from a shell file, the first that exists of:
#   $GRETA_HC_CONF, greta-healthcheck.conf beside this script, /etc/default/greta-healthcheck
# Every assignment there is exported (to greta and scontrol). Settings and defaults:
#   GRETA=greta                           the greta binary (PATH below is searched)
#   GRETA_ARGS="--profile health --device all"
#   GRETA_HC_TIMEOUT=50                   seconds before greta is stopped (Slurm's limit is 60)
#   GRETA_PROM=                           also write a node_exporter textfile here (--prom)
#   GRETA_HC_LOG=                         append a line per run (and greta's table) here
#   GRETA_HC_DRAIN_ON_UNKNOWN=1           0: do not drain when greta cannot decide (exit 2)
#   SLURM_CONF=                           for scontrol, when slurm.conf is not in its default place
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
here=$(cd "$(dirname "$0")" && pwd)
conf=${GRETA_HC_CONF:-}
[[ -z $conf && -f $here/greta-healthcheck.conf ]] && conf=$here/greta-healthcheck.conf
[[ -z $conf && -f /etc/default/greta-healthcheck ]] && conf=/etc/default/greta-healthcheck
if [[ -n $conf ]]; then
  set -a
  # shellcheck disable=SC1090
  . "$conf"
  set +a
fi
greta=${GRETA:-greta}
limit=${GRETA_HC_TIMEOUT:-50}
node=${SLURMD_NODENAME:-$(hostname -s)}
logfile=${GRETA_HC_LOG:-/dev/null}
log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" >> "$logfile"; }

args=(smoke)
read -r -a user_args <<< "${GRETA_ARGS:---profile health --device all}"
args+=("${user_args[@]}" --oneline --no-save --no-progress)
[[ -n ${GRETA_PROM:-} ]] && args+=(--prom "$GRETA_PROM")

line=$(timeout -k 5 "$limit" "$greta" "${args[@]}" 2>> "$logfile")
rc=$?
line=${line//$'\n'/ }
case $rc in
  0) log "pass: $line"; exit 0 ;;
  1) reason="greta: $line" ;;
  2)
    if [[ ${GRETA_HC_DRAIN_ON_UNKNOWN:-1} == 0 ]]; then
      log "unknown, not draining: $line"
      exit 0
    fi
    reason="greta: ${line:-UNKNOWN: greta exited 2}" ;;
  124 | 137) reason="greta: health check did not finish within ${limit} s" ;;
  *) reason="greta: health check exited $rc: $line" ;;
esac
reason=${reason:0:250}
log "drain (exit $rc): $reason"
if ! scontrol update NodeName="$node" State=DRAIN Reason="$reason"; then
  log "scontrol update NodeName=$node State=DRAIN failed"
fi
exit "$rc"
