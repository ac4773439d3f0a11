#!/bin/sh
# A scripted, LLM-free agent for `--generator command:` on the team's KernelBench-style suite
# (examples/kernelbench): each call writes a hand-written improvement of the parent as the
# candidate kpilot asked for ($KPILOT_CANDIDATE, in the workspace kpilot prepared and runs this in).
#
#   kpilot bench examples/kernelbench --budget 4 \
#     --generator "command:sh $PWD/bench/scripted_kb_agent.sh $PWD/examples/kernelbench"
#   kpilot optimize examples/kernelbench/level1/3_RowSoftmax.py --budget 4 \
#     --generator "command:sh $PWD/bench/scripted_kb_agent.sh $PWD/examples/kernelbench"
#
# The argument is the suite folder (absolute: kpilot runs the command without a shell and in a
# fresh workspace; default: ../examples/kernelbench beside this script). The problem is the stem of
# the problem file kpilot copies to task/ (task/<n>_<Name>.py), else the `// level<N>/<stem>:` line
# every candidate of the suite starts its description with (parent/*.cu). The improvements are
# SUITE/candidates/<stem>/better/*.cu in name order: the first one after the file the parent is a
# copy of (comments and all), else the first. No file left, or none for the problem: exit 1, which
# kpilot records as a generator_failure and the search survives. Prints a `Summary:` line.
# The instructions arrive on stdin and are read and ignored; nothing is sent anywhere.
suite=${1:-$(cd "$(dirname "$0")/../examples/kernelbench" 2>/dev/null && pwd)}
cat > /dev/null
ws=${KPILOT_WORKSPACE:-$PWD}
out=${KPILOT_CANDIDATE:-candidate.cu}
case "$out" in /*) ;; *) out="$ws/$out" ;; esac

stem=
for f in "$ws"/task/*.py; do
  [ -f "$f" ] && stem=$(basename "$f" .py) && break
done
parent=
for f in "$ws"/parent/*; do
  [ -f "$f" ] && parent=$f && break
done
if [ -z "$stem" ] && [ -n "$parent" ]; then
  stem=$(sed -n 's|^// level[0-9][0-9]*/\([0-9][0-9]*_[A-Za-z0-9]*\):.*|\1|p' "$parent" | head -n 1)
fi
if [ -z "$stem" ]; then
  echo "scripted_kb_agent: cannot tell the problem (no task/*.py, no '// level<N>/<stem>:' line in parent/)" >&2
  exit 1
fi
dir="$suite/candidates/$stem/better"
if [ ! -d "$dir" ]; then
  echo "scripted_kb_agent: no hand-written improvement for $stem ($dir)" >&2
  exit 1
fi

# The first better/*.cu after the one the parent is (if any).
pick=
after_parent=
[ -n "$parent" ] || after_parent=yes
for f in "$dir"/*.cu; do
  [ -f "$f" ] || continue
  if [ -n "$parent" ] && cmp -s "$f" "$parent"; then
    after_parent=yes
    pick=
    continue
  fi
  [ -z "$pick" ] && pick=$f
  [ -n "$after_parent" ] && break
done
if [ -z "$pick" ]; then
  echo "scripted_kb_agent: no improvement for $stem left after $(basename "${parent:-none}")" >&2
  exit 1
fi
cp "$pick" "$out" || exit 1
echo "none" > "$ws/APPLIED_SKILLS"
echo "Summary: $(basename "$pick") for $stem: $(sed -n 's|^// level[0-9]*/[^:]*: *||p' "$pick" | head -n 1)"
exit 0
