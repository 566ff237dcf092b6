# Shared by the setup-*.sh scripts (sourced, not run): one idempotent way to build a project-local
# virtualenv from a requirements text and mark it finished.
#
# ravel_install_venv LABEL VENV WANT PYTHONS CHECK
#   LABEL    prefix of the log lines (stderr)
#   VENV     the virtualenv's folder
#   WANT     the requirements, one per line; also the content of the marker VENV/.ravel-ok
#   PYTHONS  "3.11" or "3.9 3.10 3.11 3.12": the Python versions allowed, the first found wins
#   CHECK    a command run with the virtualenv's bin/ first on PATH after installing; it must succeed
# Prints VENV on stdout when done. The marker is removed first and written last, so a failed or interrupted
# install is redone next time.
ravel_install_venv() {
  local label="$1" venv="$2" want="$3" pythons="$4" check="$5" py="" c v
  for c in python3.11 python3.12 python3.10 python3.9 python3; do
    if command -v "$c" >/dev/null 2>&1; then
      v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
      case " $pythons " in *" $v "*) py="$c"; break ;; esac
    fi
  done
  [ -n "$py" ] || { echo "$label: needs Python $pythons; none found" >&2; return 1; }
  echo "$label: installing $(printf '%s\n' "$want" | grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' | tr '\n' ' ' \
    | sed 's/ *$//') into $venv (one time)" >&2
  mkdir -p "$(dirname "$venv")"
  rm -f "$venv/.ravel-ok"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  printf '%s\n' "$want" > "$venv/.ravel-requirements.txt"
  "$venv/bin/python" -m pip install -q -r "$venv/.ravel-requirements.txt" >&2
  PATH="$venv/bin:$PATH" bash -c "$check" >&2
  printf '%s' "$want" > "$venv/.ravel-ok"
  echo "$venv"
}

# ravel_venv_ready VENV WANT EXE: whether VENV/bin/EXE exists and the marker says WANT is installed
ravel_venv_ready() {
  [ -x "$1/bin/$3" ] && [ -f "$1/.ravel-ok" ] && [ "$(cat "$1/.ravel-ok")" = "$2" ]
}
