"""setup.py - installs the Python package `kiln` (python/kiln) with its native core.

    python3 -m pip install --no-build-isolation .

The native core is the CMake target kiln_python: this builds it in the build
tree ($KILN_BUILD_DIR, default ./build, configured with the default preset
when it is not yet), then installs the package with the extension's debug
information stripped. No package index is needed: setuptools, wheel, numpy and
pybind11 come from Debian (scripts/setup.sh). docs/python.md is the guide.
"""
import os
import re
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(kiln VERSION ([0-9.]+)", f.read()).group(1)


class CMakeBuild(build_ext):
    """Builds kiln_python with CMake and copies the extension it made."""

    def build_extension(self, ext):
        build = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "--preset", "default"], cwd=ROOT)
        subprocess.check_call(["cmake", "--build", build, "--target", "kiln_python"])
        built = os.path.join(build, "python", "kiln", os.path.basename(self.get_ext_filename(ext.name)))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        subprocess.check_call(["objcopy", "--strip-debug", built, target])


setup(
    name="kiln",
    version=project_version(),
    description="kiln: a deep-learning graph compiler for ONNX models (CPU and CUDA kernels)",
    packages=["kiln"],
    package_dir={"": "python"},
    package_data={"kiln": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("kiln._kiln", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    install_requires=["numpy"],
    python_requires=">=3.9",
    zip_safe=False,
    options={"build": {"build_base": os.path.join("build", "setuptools")}},
)
