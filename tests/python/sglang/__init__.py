"""A stub of the `sglang` package for sglattn's tests (sglang itself cannot be
installed on the build machine).  Each module mirrors the upstream module of
the same path in sgl-project/sglang: the names, signatures and fields that
sglattn.sglang touches, with behaviour reduced to what the tests drive.  Each
file names the upstream file (and the commit read) it mirrors.  No upstream
code is copied."""
