#!/bin/sh
# A scripted stand-in for an agent CLI, for checking the command: generator on a GPU machine
# without a live agent: each call writes the next of the given kernel files (absolute paths) as
# the candidate kpilot asked for ($KPILOT_CANDIDATE, in the workspace kpilot prepared), counting
# calls in STATE_FILE.
#   kpilot optimize TASK --generator "command:sh $PWD/bench/scripted_agent.sh /tmp/state K1.cu K2.cu"
state="$1"; shift
n=$(cat "$state" 2>/dev/null || echo 0)
i=0
for f in "$@"; do
  if [ "$i" -eq "$n" ]; then
    cat > /dev/null            # the instructions arrive on stdin
    cp "$f" "$KPILOT_CANDIDATE"
    echo $((n + 1)) > "$state"
    exit 0
  fi
  i=$((i + 1))
done
echo "scripted_agent: no kernel left after $n calls" >&2
exit 1
