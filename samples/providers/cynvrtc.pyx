# 2 for the bindings layout, 1 for the legacy one (as cydriver's).
cdef int _layout = 2 if __name__.startswith("cuda.bindings.") else 1

cdef nvrtcResult nvrtcVersion(int* major, int* minor) except ?NVRTC_ERROR_INVALID_INPUT nogil:
    major[0] = 12
    minor[0] = _layout
    return NVRTC_SUCCESS

cdef nvrtcResult nvrtcGetProgramSize(nvrtcProgramId prog, size_t* size) except ?NVRTC_ERROR_INVALID_INPUT nogil:
    size[0] = <size_t>(prog * 10 + _layout)
    return NVRTC_SUCCESS
