# Bash kernel driver of the local code interpreter, run as
#   bash --noprofile --norc -c "$(cat bash_kernel.sh)" e2b-kernel <cwd>
#
# The server writes one line per execution (see kernel.rs: the code is
# ANSI-C quoted, so every execution is a single line) or the line
# "#e2b-interrupt". A watcher (a process substitution) reads the server's
# lines: it forwards executions to this shell and turns an interrupt into
# SIGINT for the shell's process group, so the interrupt works while the
# shell is busy. Background jobs ignore SIGINT (no job control), and the
# shell's trap ends the running execution (`return` from the sourced code)
# instead of the shell, so variables survive.
cd -- "$1" 2>/dev/null || echo "cannot enter $1" >&2
exec 3<&0 </dev/null
# SIGINT for the running execution: the shell's process group when the shell
# leads it, else (bubblewrap puts the shell under its own init's group) the
# shell's direct children and the shell itself. The watcher ignores it.
__e2b_interrupt() {
  local pgid line rest f pid ppid
  IFS= read -r line </proc/$$/stat 2>/dev/null
  rest=${line##*) }
  read -r _ pgid _ _ <<<"${rest#* }"
  if [ "$pgid" = "$$" ]; then
    kill -INT -- "-$$" 2>/dev/null
    return
  fi
  for f in /proc/[0-9]*/stat; do
    IFS= read -r line <"$f" 2>/dev/null || continue
    rest=${line##*) }
    read -r _ ppid _ <<<"$rest"
    pid=${f#/proc/}
    pid=${pid%/stat}
    if [ "$ppid" = "$$" ] && [ "$pid" != "$BASHPID" ]; then
      kill -INT "$pid" 2>/dev/null
    fi
  done
  kill -INT "$$" 2>/dev/null
}
exec 4< <(
  trap '' INT
  while IFS= read -r -u 3 line; do
    if [ "$line" = "#e2b-interrupt" ]; then
      __e2b_interrupt
    else
      printf '%s\n' "$line"
    fi
  done
)
exec 3<&-
trap 'return 130 2>/dev/null' INT
printf '\036E2B\037{"type":"ready"}\n'
while :; do
  IFS= read -r -u 4 __e2b_line
  __e2b_status=$?
  if [ "$__e2b_status" -eq 0 ]; then
    eval "$__e2b_line"
  elif [ "$__e2b_status" -le 128 ]; then
    exit 0
  fi
done
