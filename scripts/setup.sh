# Sourced by demo.sh and test.sh: installs missing Debian packages (as root or through
# sudo; otherwise prints the apt-get line and stops), then configures and builds with Meson.
# Idempotent: a second run only rebuilds what changed.

STEPSIM_PACKAGES="meson ninja-build pkg-config gcc libc6-dev libopenmpi-dev openmpi-bin
libhdf5-dev hdf5-tools libgsl-dev libyaml-dev python3 python3-h5py python3-matplotlib
python3-numpy python3-pandas"

# The test suite also renders `stepsim report --html` in a headless browser.
STEPSIM_TEST_PACKAGES="chromium"

stepsim_install_packages() {
    local missing="" p
    for p in $STEPSIM_PACKAGES ${STEPSIM_EXTRA_PACKAGES:-}; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "stepsim: installing missing Debian packages:$missing" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo"
        else
            echo "stepsim: please install them first:" >&2
            echo "  sudo apt-get update && sudo apt-get install -y$missing" >&2
            exit 1
        fi
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
}

stepsim_build() {
    local build="${STEPSIM_BUILD_DIR:-build}"
    local werror=false
    [ "${CI:-}" = "true" ] && werror=true
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" --buildtype=debugoptimized -Dwerror=$werror
    else
        meson configure "$build" -Dwerror=$werror >/dev/null
    fi
    ninja -C "$build"
}
