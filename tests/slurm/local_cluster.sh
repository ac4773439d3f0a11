#!/usr/bin/env bash
# A real Slurm cluster on this machine for the tests: munge, slurmctld and N slurmd daemons, each
# node a name on localhost (Debian's slurmd runs several per host with -N), proctrack/linuxproc.
#   local_cluster.sh start DIR [NODES] [PORT_BASE]   writes DIR/slurm.conf, starts the daemons,
#                                                    waits until every node is idle; prints the conf
#   local_cluster.sh stop DIR                        stops them and leaves DIR
# Exit 77 (with the reason on stderr) where the daemons cannot start here: not root, or Slurm's or
# munge's packages missing (scripts/setup.sh installs them).
set -uo pipefail
cmd=${1:-}; dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 start|stop DIR [NODES] [PORT_BASE]" >&2; exit 2; }

stop() {
  for f in "$dir"/*.pid; do [[ -f "$f" ]] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 0.5
  for f in "$dir"/*.pid; do [[ -f "$f" ]] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f"; done
  return 0
}
if [[ "$cmd" == stop ]]; then stop; exit 0; fi

nodes=${3:-2}; base=${4:-$((20000 + ($$ % 2000) * 10))}
[[ $(id -u) -eq 0 ]] || { echo "skip: slurmd needs root to start jobs as their user" >&2; exit 77; }
for p in slurmctld slurmd munged sbatch; do
  command -v "$p" >/dev/null 2>&1 || [[ -x /usr/sbin/$p ]] || { echo "skip: $p is not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 77; }
done
export PATH=/usr/sbin:$PATH
mkdir -p "$dir/state" "$dir/log"
if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null
  [[ -f /etc/munge/munge.key ]] || { echo "skip: no /etc/munge/munge.key (reinstall munge)" >&2; exit 77; }
  munged --force >/dev/null 2>&1 || runuser -u munge -- munged >/dev/null 2>&1
  munge -n >/dev/null 2>&1 || { echo "skip: munged does not start" >&2; exit 77; }
fi
cpus=$(nproc)
{
  echo "ClusterName=kpilottest"
  echo "SlurmctldHost=localhost"
  echo "SlurmUser=root"
  echo "SlurmctldPort=$base"
  echo "AuthType=auth/munge"
  echo "StateSaveLocation=$dir/state"
  echo "SlurmdSpoolDir=$dir/spool-%n"
  echo "SlurmctldPidFile=$dir/slurmctld.pid"
  echo "SlurmdPidFile=$dir/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/log/slurmctld.log"
  echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "SchedulerType=sched/backfill"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_Core"
  echo "ReturnToService=2"
  echo "MpiDefault=none"
  echo "SlurmdTimeout=10"
  echo "InactiveLimit=0"
  names=()
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=n$i NodeHostname=localhost Port=$((base + i)) CPUs=$cpus State=UNKNOWN"
    names+=("n$i")
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP"
  echo "PartitionName=small Nodes=n1 MaxNodes=1 MaxTime=INFINITE State=UP"
} > "$dir/slurm.conf"
# Slurm reads cgroup.conf beside slurm.conf. Where systemd's dbus cannot give slurmd a scope (a
# container), it makes the scope's cgroup directory itself.
printf 'CgroupPlugin=autodetect\nIgnoreSystemdOnFailure=yes\n' > "$dir/cgroup.conf"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i >"$dir/log/slurmctld.out" 2>&1 || { echo "skip: slurmctld does not start: $(tail -3 "$dir/log/slurmctld.log" 2>/dev/null)" >&2; stop; exit 77; }
for i in $(seq 1 "$nodes"); do
  slurmd -f "$SLURM_CONF" -N "n$i" >"$dir/log/slurmd-n$i.out" 2>&1 || { echo "skip: slurmd n$i does not start" >&2; stop; exit 77; }
done
for _ in $(seq 1 100); do
  idle=$(sinfo -h -p debug -t idle -o %D 2>/dev/null | head -1)
  [[ "$idle" == "$nodes" ]] && { echo "$SLURM_CONF"; exit 0; }
  sleep 0.2
done
echo "skip: the nodes did not come up idle: $(sinfo 2>&1 | tail -3)" >&2
stop
exit 77
