file(REMOVE_RECURSE
  "libcypatch-rules.a"
)
