"""The `bwrap` runtime: each harness run and each server start in a bubblewrap enclosure of its own."""
