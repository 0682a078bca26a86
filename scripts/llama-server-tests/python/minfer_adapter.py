"""pytest plugin for running llama.cpp's server tests offline (loaded with -p minfer_adapter).

The suite's session fixture downloads every preset's model before the first test
(ServerPreset.load_all). Offline there is nothing to download: the llama-server shim maps each
model to a local fixture and refuses the ones it lacks, so the tests that need those fail there.
"""

import utils


def _no_downloads() -> None:
    return None


utils.ServerPreset.load_all = staticmethod(_no_downloads)
