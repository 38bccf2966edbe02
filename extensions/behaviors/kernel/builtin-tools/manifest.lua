return {
  name = "builtin-tools",
  description = "The model's tools: read, write, edit, ls, grep, find, bash (thin adapters over fen.native).",
}
