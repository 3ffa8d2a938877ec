file(REMOVE_RECURSE
  "libcypatch.a"
)
