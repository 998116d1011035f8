#!/usr/bin/env bash
# Build Batsim 5 on Debian 12 without Nix, then run its EASY example EDC and its own tests.
#
#   BATSIM_SRC=<batsim source>  BATPROTO_SRC=<batprotocol source>  INTERVALSET_TGZ=<archive> \
#     [VARIANT=snapshot|rc2] [PREFIX=/opt/batsim5-snapshot] [RC2_STANDIN=<script>] \
#     [JOBS=2] [RUN_TESTS=1] [FORCE=0]  bash docker/batsim5/build.sh
#
# Every input is a path given by the caller (nothing is fetched, nothing is read from this
# repository but this script); a "source" is either a git directory (bare or not) of the
# public repository, or a .tar.gz archive of it (as GitHub serves, one top folder):
#   BATSIM_SRC       github.com/oar-team/batsim (LGPL-3.0)
#   BATPROTO_SRC     batprotocol's history as kept in github.com/Saleh1806/Batsim_Test_1
#                    (LGPL-3.0): batprotocol.fbs and cpp/ at its root
#   INTERVALSET_TGZ  intervalset 1.2.0 (framagit.org/batsim/intervalset, LGPL-3.0), or an
#                    API-compatible stand-in archive with a meson build
#
# VARIANT=snapshot (default): Batsim ed55a974 (2025-02-02), the last Batsim commit whose
#   pinned batprotocol is public, with batprotocol 3f3be00 (2024-12-17): the genuine pair,
#   the wire format batpolicy's Batsim 5 codec follows. Patches: flatbuffers' GenText is
#   GenerateText in Debian 12's flatbuffers 2.0.8; `#include <cmath>` for GCC 12 in the
#   EDC examples.
# VARIANT=rc2: Batsim v5.0.0-rc2 (ba7ea85f, 2026-06-19). rc2 pins batprotocol 2800ed5c,
#   published on framagit only; RC2_STANDIN (a script that adds to 3f3be00 the tables rc2's
#   sources call, reconstructed from those call sites) completes the schema. Batsim and its
#   EDCs then agree with each other, but the layout and JSON names of the added tables are
#   a reconstruction: NOT upstream's wire format. Also: SimGrid 4.0 -> Debian's 3.32
#   (Engine::add_actor -> Actor::create), <cmath> in profiles.cpp.
# Both: the exit-time log lines of ~Job/~Profile read workload->name after the workloads
#   were freed (a crash in test_replay_smpi under SimGrid 3.32): they log without it.
#
# Outputs: PREFIX/{bin,lib,include} (batsim, batsim-func-tests, the EDC libraries),
# PREFIX/src (the patched sources), PREFIX/out (the EASY run, the tests' report).
set -euo pipefail

VARIANT=${VARIANT:-snapshot}
case "$VARIANT" in
  snapshot) DEF_REF=ed55a974e29ba1909fe8bb01d3f490b2d9183185 ;;
  rc2) DEF_REF=ba7ea85fa20e81415e2f52290b56120192504553 ;;
  *) echo "build.sh: VARIANT must be snapshot or rc2, got '$VARIANT'" >&2; exit 2 ;;
esac
PREFIX=${PREFIX:-/opt/batsim5-$VARIANT}
SRC=$PREFIX/src
OUT=$PREFIX/out
JOBS=${JOBS:-2}
FORCE=${FORCE:-0}
RUN_TESTS=${RUN_TESTS:-1}
BATSIM_REF=${BATSIM_REF:-$DEF_REF}
BATPROTO_REF=${BATPROTO_REF:-3f3be00dee47b3f581ea171f9fec517258f0c632}

need() {  # need VAR "what it is": stop with one line naming the missing input
  if [[ -z "${!1:-}" || ! -e "${!1}" ]]; then
    echo "build.sh: set $1 to $2 (got '${!1:-}')" >&2; exit 2
  fi
}
need BATSIM_SRC "a git dir or .tar.gz of github.com/oar-team/batsim"
need BATPROTO_SRC "a git dir or .tar.gz of github.com/Saleh1806/Batsim_Test_1 (batprotocol)"
need INTERVALSET_TGZ "an intervalset 1.2.0 .tar.gz (or an API-compatible stand-in)"
if [[ "$VARIANT" == rc2 ]]; then need RC2_STANDIN "the rc2 batprotocol stand-in script"; fi

log() { printf '\n=== %s\n' "$*"; }
done_mark() { [[ "$FORCE" != 1 && -e "$SRC/.done-$1" ]]; }
mark() { touch "$SRC/.done-$1"; }
fresh() { rm -rf "$1"; mkdir -p "$1"; }

# unpack SOURCE REF DEST [PATHS...]: a git dir's REF (git archive), or an archive's top folder
unpack() {
  local src=$1 ref=$2 dest=$3; shift 3
  if [[ -d "$src" ]]; then
    local gitdir=$src; [[ -d "$src/.git" ]] && gitdir=$src/.git
    echo "$src: $(git --git-dir="$gitdir" rev-parse "$ref^{commit}")"
    git --git-dir="$gitdir" archive "$ref" "$@" | tar -x -C "$dest"
  else
    sha256sum "$src"
    tar -xzf "$src" -C "$dest" --strip-components=1
  fi
}

# ---- 1. Debian 12 packages ---------------------------------------------------------------
APT_PKGS=(build-essential git pkg-config cmake meson ninja-build libsimgrid-dev libboost-dev
  rapidjson-dev libzmq3-dev cppzmq-dev flatbuffers-compiler libflatbuffers-dev libcli11-dev
  nlohmann-json3-dev libgtest-dev python3-pytest python3-pandas)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

mkdir -p "$PREFIX" "$SRC" "$OUT"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LDFLAGS="-Wl,-rpath,$PREFIX/lib${LDFLAGS:+ $LDFLAGS}"
MESON=(--prefix="$PREFIX" --libdir=lib --buildtype=release)

# ---- 2. intervalset ----------------------------------------------------------------------
if ! done_mark intervalset; then
  log "intervalset"
  fresh "$SRC/intervalset"
  sha256sum "$INTERVALSET_TGZ"
  tar -xzf "$INTERVALSET_TGZ" -C "$SRC/intervalset" --strip-components=1
  (cd "$SRC/intervalset" && meson setup build "${MESON[@]}" && ninja -C build -j "$JOBS" &&
    ninja -C build install)
  mark intervalset
fi

# ---- 3. batprotocol-cpp ------------------------------------------------------------------
if ! done_mark batprotocol; then
  log "batprotocol-cpp $BATPROTO_REF"
  fresh "$SRC/batprotocol"
  unpack "$BATPROTO_SRC" "$BATPROTO_REF" "$SRC/batprotocol" batprotocol.fbs cpp
  sed -i 's/\bGenText(/GenerateText(/' "$SRC/batprotocol/cpp/src/message_builder.cpp"
  if [[ "$VARIANT" == rc2 ]]; then python3 "$RC2_STANDIN" "$SRC/batprotocol"; fi
  (cd "$SRC/batprotocol/cpp" && meson setup build "${MESON[@]}" && ninja -C build -j "$JOBS" &&
    ninja -C build install)
  mark batprotocol
fi

# ---- 4. Batsim ---------------------------------------------------------------------------
if ! done_mark batsim; then
  log "batsim $BATSIM_REF ($VARIANT)"
  fresh "$SRC/batsim"
  unpack "$BATSIM_SRC" "$BATSIM_REF" "$SRC/batsim"
  if [[ "$VARIANT" == rc2 ]]; then
    sed -i 's/simgrid::s4u::Engine::get_instance()->add_actor(/simgrid::s4u::Actor::create(/' \
      "$SRC"/batsim/src/*.cpp
    sed -i '1i #include <cmath>' "$SRC/batsim/src/profiles.cpp"
  fi
  sed -i 's|XBT_INFO("Job .%s. is being deleted from workload %s", id.to_string().c_str(), workload->name.c_str());|XBT_INFO("Job '"'"'%s'"'"' is being deleted", id.to_string().c_str());|' \
    "$SRC/batsim/src/jobs.cpp"
  sed -i 's|XBT_INFO("Profile .%s. is being deleted (workload %s).", name.c_str(), workload->name.c_str());|XBT_INFO("Profile '"'"'%s'"'"' is being deleted.", name.c_str());|' \
    "$SRC/batsim/src/profiles.cpp"
  (cd "$SRC/batsim" && meson setup build "${MESON[@]}" -Ddo_internal_tests=true &&
    ninja -C build -j "$JOBS" && ninja -C build install)
  mark batsim
fi

# ---- 5. the example EDC libraries (test/edc-lib) -----------------------------------------
if ! done_mark edc; then
  log "EDC libraries (test/edc-lib)"
  E="$SRC/batsim/test/edc-lib"
  grep -q '^#include <cmath>' "$E/platform-check.cpp" || sed -i '1i #include <cmath>' "$E/platform-check.cpp"
  (cd "$E" && rm -rf build && meson setup build "${MESON[@]}" && ninja -C build -j "$JOBS" &&
    ninja -C build install)
  mark edc
fi

# ---- 6. one simulation: the EASY example EDC -----------------------------------------------
log "simulation: small_platform + test_delays + libeasy.so"
fresh "$OUT/easy"
if [[ "$VARIANT" == rc2 ]]; then
  echo '{"format_json": false}' >"$OUT/easy/edc-init"; EDC=("$PREFIX/lib/libeasy.so" "$OUT/easy/edc-init")
else
  : >"$OUT/easy/edc-init"; EDC=("$PREFIX/lib/libeasy.so" 0 "$OUT/easy/edc-init")
fi
"$PREFIX/bin/batsim" -p "$SRC/batsim/platforms/small_platform.xml" \
  -w "$SRC/batsim/workloads/test_delays.json" --edc-library-file "${EDC[@]}" \
  -e "$OUT/easy/batout/" >"$OUT/easy/stdout" 2>"$OUT/easy/stderr"
cat "$OUT/easy/batout/jobs.csv"

# ---- 7. Batsim's own tests: internal gtest, then its pytest suite ---------------------------
# (Debian's python3, whose pytest and pandas step 1 installed, whatever python3 PATH finds)
if [[ "$RUN_TESTS" == 1 ]]; then
  log "batsim-func-tests"
  "$PREFIX/bin/batsim-func-tests" | tee "$OUT/func-tests.txt" | tail -1
  log "pytest (Batsim's test/)"
  status=0
  (cd "$SRC/batsim/test" &&
    PATH="$PREFIX/bin:$PATH" PLATFORM_DIR="$SRC/batsim/platforms" WORKLOAD_DIR="$SRC/batsim/workloads" \
    EXTERNAL_EVENTS_DIR="$SRC/batsim/events" EDC_LD_LIBRARY_PATH="$PREFIX/lib" TEST_INSTANCE_TIMEOUT=60 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -rf --test-output-dir="$OUT/pytest") \
    | tee "$OUT/pytest.txt" | tail -3 || status=$?
  if [[ $status != 0 ]]; then echo "build.sh: some of Batsim's tests failed (see $OUT/pytest.txt)" >&2; exit 1; fi
fi
log "done: $PREFIX/bin/batsim ($VARIANT)"
