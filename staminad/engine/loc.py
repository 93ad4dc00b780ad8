"""Lines of code per workspace, as the engine names it: counted by the sandbox (`staminad.sandbox.inside.loc`)."""

from staminad.sandbox.inside.loc import CHUNK, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, count_loc

__all__ = ["CHUNK", "MAX_FILES", "MAX_FILE_BYTES", "MAX_TOTAL_BYTES", "count_loc"]
