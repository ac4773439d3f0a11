#!/bin/sh
# A scripted stand-in for an agent CLI, for checking the command: generator on a GPU machine
# without a live agent. Each call writes one of the given kernel files as the candidate kpilot
# asked for ($KPILOT_CANDIDATE, in the workspace kpilot prepared): the one after the parent's
# source in the list, or the first when the parent is none of them. So a search from the naive
# start drafts K1, then K2 from K1. Nothing is kept between calls (the agent's sandbox leaves it
# no place to keep it). The files must be readable from the sandbox: outside the task folder,
# which it hides, and outside /tmp, which is its own.
#   kpilot optimize TASK --generator "command:sh $PWD/bench/scripted_agent.sh K1.cu K2.cu"
cat > /dev/null  # the instructions arrive on stdin
parent="parent/$(ls parent/ | head -n 1)"
next=1
i=0
for f in "$@"; do
  i=$((i + 1))
  [ -r "$f" ] || { echo "scripted_agent: cannot read $f from the agent's sandbox" >&2; exit 1; }
  cmp -s "$f" "$parent" && next=$((i + 1))
done
[ "$next" -le "$#" ] || { echo "scripted_agent: no kernel after the parent's (the last of $#)" >&2; exit 1; }
eval "kernel=\${$next}"
cp "$kernel" "$KPILOT_CANDIDATE"
