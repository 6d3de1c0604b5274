"""Where Numba caches tapegrad's compiled kernels (imported before any kernel is compiled).

``@njit(cache=True)`` needs a writable cache: the ``__pycache__`` next to the kernel files, or
a per-user directory (``~/.cache/numba``).  On a read-only install run without a home
directory (a container, a system site-packages, a service account) neither exists, and Numba
refuses to compile with "no locator available".  Then, unless ``NUMBA_CACHE_DIR`` is already
set, a temporary directory becomes the cache for this session, with one warning.
"""

import os
import sys
import tempfile
import warnings

_PKG = os.path.dirname(os.path.abspath(__file__))


def _writable(path):
    """Can Numba create ``path`` and a file in it?  (The check its cache locators make.)"""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
        return True
    except OSError:
        return False


def _user_cache_dir():
    try:
        from numba.misc.appdirs import AppDirs

        return AppDirs(appname="numba", appauthor=False).user_cache_dir
    except Exception:  # noqa: BLE001 - no home directory, no pwd entry...
        return None


def _private_temp_dir():
    """A per-user cache under the temp directory, reused across sessions when it is ours and
    private (Numba's cache files are pickles: never load ones another user could write)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"tapegrad-numba-cache-{uid}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        if (
            st.st_uid == uid
            and not st.st_mode & 0o022
            and os.path.isdir(path)
            and not os.path.islink(path)
            and _writable(path)
        ):
            return path
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="tapegrad-numba-cache-")


def ensure_cache_dir():
    """Point Numba at a temporary cache when it would find no writable one; returns it."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    if _writable(os.path.join(_PKG, "__pycache__")):
        return None
    user = _user_cache_dir()
    if user is not None and _writable(user):
        return None
    path = _private_temp_dir()
    os.environ["NUMBA_CACHE_DIR"] = path
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()
    warnings.warn(
        f"tapegrad: neither the package directory ({_PKG}) nor a user cache "
        "directory is writable, so Numba cannot cache tapegrad's compiled kernels "
        f"there; caching them in {path} instead. Set NUMBA_CACHE_DIR to a writable "
        "directory to keep them.",
        RuntimeWarning,
        stacklevel=3,
    )
    return path


ensure_cache_dir()
