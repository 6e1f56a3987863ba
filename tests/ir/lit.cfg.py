# lit configuration of kiln's text-IR tests: each .kir file carries RUN lines
# that drive kiln-opt (or kiln) and check the output with FileCheck.
import os

import lit.formats

config.name = "kiln-ir"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".kir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_build_dir, "tests", "ir")
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%kiln-opt", config.kiln_opt))
config.substitutions.append(("%kiln", config.kiln))
config.substitutions.append(("%models", os.path.join(config.kiln_source_dir, "models")))
config.substitutions.append(("%errors", os.path.join(config.kiln_source_dir, "tests", "errors")))
