#!/bin/sh
# A stand-in for an agent CLI (codex exec, claude -p …) in the command: generator's tests. It
# reads the instructions on stdin, checks the workspace kpilot prepared, and writes the candidate
# file named by $KPILOT_CANDIDATE from the parent, per FAKE_AGENT_MODE (given as the first
# argument, since the environment is scrubbed):
#   copy     the parent with a "// Summary:" line and one new global, so the code differs (default)
#   env      that, plus a comment listing every variable the agent saw
#   nothing  writes no file
#   hang     sleeps for a long time
#   extra    the candidate plus other files (only the candidate must come back)
#   symlink  the candidate as a symbolic link to a file outside the workspace
#   bad      a file without kpilot_launch
#   same     the parent unchanged but for a comment (a repeat)
#   escape   the copy, plus a comment saying whether the secret ($2) is in an ancestor's
#            environment, what the folder $3 holds, and whether it could write the file $4
#   skills   the copy, plus a comment naming the card folders it found under both skills/ and
#            .claude/skills/, and APPLIED_SKILLS listing those ids and one made-up id
mode="${1:-copy}"
cat > stdin.txt
for f in INSTRUCTIONS.md GUIDANCE.md task/task.toml include/kpilot/kernel.h; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 3; }
done
parent=$(ls parent/ | head -n 1)
# Unique per run: in kpilot's sandbox every agent has the same pid (its own PID namespace).
variant="int fake_agent_variant_$(od -An -N4 -tu4 /dev/urandom | tr -d ' ') = 0;"
case "$mode" in
  copy) { echo "// Summary: fake agent copy of $parent"; cat "parent/$parent"; echo "$variant"; } > "$KPILOT_CANDIDATE" ;;
  env) { cat "parent/$parent"; echo "$variant"; env | sort | sed 's|^|// env: |'; } > "$KPILOT_CANDIDATE" ;;
  nothing) echo "I could not do it" >&2 ;;
  hang) sleep 600 ;;
  extra) { cat "parent/$parent"; echo "$variant"; } > "$KPILOT_CANDIDATE"; echo junk > other.cpp; mkdir -p sub; echo x > sub/candidate.cpp ;;
  symlink) ln -s /etc/hostname "$KPILOT_CANDIDATE" ;;
  same) { echo "// nothing new"; cat "parent/$parent"; } > "$KPILOT_CANDIDATE" ;;
  bad) echo "int main() { return 0; }" > "$KPILOT_CANDIDATE" ;;
  escape)
    found=no
    p=$PPID
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
      grep -qa "$2" "/proc/$p/environ" 2>/dev/null && found=yes
      p=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)
    done
    held=$(ls -A "$3" 2>/dev/null | tr '\n' ' ')
    if touch "$4" 2>/dev/null; then outside=yes; else outside=no; fi
    { cat "parent/$parent"; echo "$variant"; echo "// secret: $found; held: [$held]; outside: $outside"; } > "$KPILOT_CANDIDATE" ;;
  skills)
    grep -q "write their ids to the file .APPLIED_SKILLS." INSTRUCTIONS.md || { echo "INSTRUCTIONS.md does not ask for APPLIED_SKILLS" >&2; exit 4; }
    found=""
    for d in skills/*/; do
      id=$(basename "$d")
      [ -f "skills/$id/SKILL.md" ] && [ -f ".claude/skills/$id/SKILL.md" ] && found="$found $id"
    done
    { cat "parent/$parent"; echo "$variant"; echo "// cards:$found"; } > "$KPILOT_CANDIDATE"
    { for id in $found; do echo "$id"; done; echo "made-up-card"; } > APPLIED_SKILLS ;;
esac
echo "Summary: fake agent ($mode)"
