# Shared by the cache/restore and cache/save stand-ins (sourced, not run).
# Entries live in $FLAKEWARDEN_ACT_CACHE, one directory each: key, version, archive.tar.

if [ -z "${FLAKEWARDEN_ACT_CACHE:-}" ]; then
  echo "::error title=cache stand-in::FLAKEWARDEN_ACT_CACHE is not set: it names the directory" \
    "the local caches are kept in (.ci/act-ci sets it)"
  exit 1
fi
CACHE_DIR="$FLAKEWARDEN_ACT_CACHE"
mkdir -p "$CACHE_DIR"

cache_check_key() {
  # The checks actions/cache makes before it looks anything up.
  if [ -z "$1" ]; then
    echo "::error::Input required and not supplied: key"
    exit 1
  fi
  if [ "${#1}" -gt 512 ]; then
    echo "::error::Key Validation Error: $1 cannot be larger than 512 characters."
    exit 1
  fi
  case "$1" in
    *,*)
      echo "::error::Key Validation Error: $1 cannot contain commas."
      exit 1 ;;
  esac
}

cache_paths() {
  # CACHE_PATHS (the path input) as CACHE_REL: each path relative to the workspace, the form
  # actions/cache archives them in. Globs and ! exclusions are refused rather than guessed at.
  CACHE_LINES=()
  CACHE_REL=()
  local line abs
  while IFS= read -r line; do
    line="$(printf '%s' "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')"
    [ -n "$line" ] || continue
    case "$line" in
      '!'* | *'*'* | *'?'* | *'['*)
        echo "::error title=cache stand-in::path '$line': globs and ! patterns are not supported"
        exit 1 ;;
    esac
    CACHE_LINES+=("$line")
    # shellcheck disable=SC2088 # the literal ~ of the input, expanded here
    case "$line" in
      '~' | '~/'*) abs="$HOME${line#\~}" ;;
      /*) abs="$line" ;;
      *) abs="$GITHUB_WORKSPACE/$line" ;;
    esac
    CACHE_REL+=("$(realpath -m -s --relative-to="$GITHUB_WORKSPACE" "$abs")")
  done < <(printf '%s\n' "$CACHE_PATHS")
  if [ "${#CACHE_REL[@]}" -eq 0 ]; then
    echo "::error::Input required and not supplied: path"
    exit 1
  fi
}

cache_version() {
  # Like actions/cache's version: the paths as given and the archive format, so a cache is
  # only restored for the same paths.
  printf '%s|' "${CACHE_LINES[@]}" tar | sha256sum | cut -d' ' -f1
}
