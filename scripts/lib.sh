# Shared by scripts/demo and scripts/test (sourced, not run).
# Installs what is missing from Debian's packages and configures/builds with CMake + Ninja.

TAWPIPE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages the build and the test suite need. CUDA Toolkit + NCCL are not Debian packages:
# the CUDA backend is built when they are present in the standard CUDA prefix, skipped otherwise.
TAWPIPE_PACKAGES=(
  cmake ninja-build g++ clang clang-format ccache pkg-config
  libboost-graph-dev libboost-program-options-dev libyaml-cpp-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin libopenblas-dev
  python3 python3-matplotlib python3-jsonschema python3-yaml
)

log() { printf '\033[1m[tawpipe]\033[0m %s\n' "$*" >&2; }

# Installs the packages of TAWPIPE_PACKAGES that are not installed yet; does nothing (and needs no
# network) when all are there.
ensure_packages() {
  local missing=()
  local p
  for p in "${TAWPIPE_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "all ${#TAWPIPE_PACKAGES[@]} packages present; skipping apt-get"
    return 0
  fi
  log "installing: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# configure_build DIR [cmake args...]: configures once, re-configures cheaply afterwards.
configure_build() {
  local dir="$1"
  shift
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$TAWPIPE_ROOT" -B "$dir" -G Ninja "${launcher[@]}" "$@" >"$dir.configure.log" 2>&1 || {
    cat "$dir.configure.log" >&2
    return 1
  }
}

# Number of parallel jobs: the cores, but keep within memory (about 2 GiB per compile job).
build_jobs() {
  local cores mem_gib
  cores=$(nproc)
  mem_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)
  local by_mem=$((mem_gib / 2))
  [ "$by_mem" -lt 1 ] && by_mem=1
  [ "$by_mem" -lt "$cores" ] && echo "$by_mem" || echo "$cores"
}
