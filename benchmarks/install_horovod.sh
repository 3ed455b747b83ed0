#!/usr/bin/env bash
# Install Horovod 0.28.1 (PyTorch + Gloo; no MPI / TensorFlow / MXNet) into the *active*
# Python environment, patched to build against torch >= 2.1 (which needs C++17).
#
#   source /path/to/venv/bin/activate     # torch must already be installed there
#   bash install_horovod.sh
#
# Environment knobs: PYTHON (default: python), MAKEFLAGS (default: -j2),
# HOROVOD_BUILD_NICE (default: 19), KEEP_BUILD_DIR=1 keeps the patched source tree.
set -euo pipefail

PY="${PYTHON:-python}"
HVD_VERSION=0.28.1
HVD_SHA256=92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0

# --- sanity checks --------------------------------------------------------------------------
"$PY" - <<'EOF'
import sys
if sys.prefix == sys.base_prefix:
    sys.exit("install_horovod.sh: no virtual environment is active (sys.prefix == sys.base_prefix)")
try:
    import torch
except ImportError:
    sys.exit("install_horovod.sh: torch is not installed in the active environment")
print(f"python {sys.version.split()[0]} at {sys.prefix}; torch {torch.__version__}")
EOF
for tool in cmake c++ patch; do
    command -v "$tool" >/dev/null || { echo "install_horovod.sh: '$tool' not found on PATH" >&2; exit 1; }
done
cmake --version | head -n1

# --- build/runtime Python deps (--no-build-isolation builds against the env's own packages) ---
# packaging: imported by horovod's setup.py; wheel/setuptools: build the wheel;
# cloudpickle psutil pyyaml cffi: horovod's install_requires (= its setup_requires when building);
# numpy: needed at run time by hvd.broadcast_object / hvd.broadcast_optimizer_state, not declared by horovod.
"$PY" -m pip install 'setuptools>=61' wheel packaging cloudpickle psutil pyyaml 'cffi>=1.4.0' numpy

# --- fetch the sdist (hash-checked) and unpack --------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/horovod-build.XXXXXX")"
if [[ "${KEEP_BUILD_DIR:-0}" != 1 ]]; then trap 'rm -rf "$WORK"' EXIT; fi
echo "horovod==${HVD_VERSION} --hash=sha256:${HVD_SHA256}" > "$WORK/req.txt"
"$PY" -m pip download --no-deps --no-binary :all: --require-hashes -r "$WORK/req.txt" -d "$WORK/dl"
tar -xzf "$WORK/dl/horovod-${HVD_VERSION}.tar.gz" -C "$WORK" --no-same-owner
SRC="$WORK/horovod-${HVD_VERSION}"

# --- patch -----------------------------------------------------------------------------------
# 1+2: torch >= 2.1 headers need C++17 ("#error C++17 or later compatible compiler is required
#      to use PyTorch"); horovod forces C++14 at top level and again in horovod/torch.
# 3:   distutils is gone in Python >= 3.12; use sysconfig for the Python include dir.
(cd "$SRC" && patch -p1 --forward <<'PATCH'
diff --git a/CMakeLists.txt b/CMakeLists.txt
--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -16,7 +16,7 @@ endif()
 
 project(horovod CXX)
 
-set(CMAKE_CXX_STANDARD 14)
+set(CMAKE_CXX_STANDARD 17)
 set(CMAKE_CXX_STANDARD_REQUIRED ON)
 set(CMAKE_CXX_EXTENSIONS OFF)
 
diff --git a/horovod/torch/CMakeLists.txt b/horovod/torch/CMakeLists.txt
--- a/horovod/torch/CMakeLists.txt
+++ b/horovod/torch/CMakeLists.txt
@@ -34,7 +34,7 @@ if (Pytorch_ROCM)
 endif()
 
 include_directories(SYSTEM ${Pytorch_INCLUDE_DIRS})
-execute_process(COMMAND ${PY_EXE} -c "from distutils.sysconfig import get_python_inc; print(get_python_inc())"
+execute_process(COMMAND ${PY_EXE} -c "import sysconfig; print(sysconfig.get_paths()['include'])"
                 OUTPUT_VARIABLE PYTHON_INCLUDE_PATH OUTPUT_STRIP_TRAILING_WHITESPACE)
 include_directories(SYSTEM ${PYTHON_INCLUDE_PATH})
 set(CMAKE_CXX_FLAGS "${Pytorch_COMPILE_FLAGS} ${CMAKE_CXX_FLAGS}")
@@ -64,7 +64,7 @@ parse_version(${Pytorch_VERSION} VERSION_DEC)
 add_definitions(-DPYTORCH_VERSION=${VERSION_DEC} -DTORCH_API_INCLUDE_EXTENSION_H=1)
 set(Pytorch_CXX11 ${Pytorch_CXX11} PARENT_SCOPE)
 if(NOT Pytorch_VERSION VERSION_LESS "1.5.0")
-    set(CMAKE_CXX_STANDARD 14)
+    set(CMAKE_CXX_STANDARD 17)
 endif()
 
 # PyTorch SOURCES
PATCH
)

# --- build + install --------------------------------------------------------------------------
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
export HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_CPU_OPERATIONS=GLOO
export CMAKE_POLICY_VERSION_MINIMUM=3.5   # CMake >= 4 refuses gloo/flatbuffers' cmake_minimum_required(2.8.12)
export MAKEFLAGS="${MAKEFLAGS:--j2}"      # setup.py would pass -j8 when MAKEFLAGS is unset
nice -n "${HOROVOD_BUILD_NICE:-19}" "$PY" -m pip install --no-build-isolation --no-deps --no-cache-dir \
    --force-reinstall "$SRC"

# --- smoke test -------------------------------------------------------------------------------
(cd / && "$PY" - <<'EOF'
import horovod, horovod.torch as hvd
hvd.init()
assert hvd.gloo_built() and hvd.gloo_enabled() and not hvd.mpi_built(), "unexpected controller build"
print(f"horovod {horovod.__version__} OK: size={hvd.size()} rank={hvd.rank()} gloo_built={hvd.gloo_built()} mpi_built={hvd.mpi_built()}")
EOF
)
