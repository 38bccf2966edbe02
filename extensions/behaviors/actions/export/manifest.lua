return {
  name = "export",
  description = "/export [FILE]: this conversation as one self-contained HTML file (Markdown or JSON by the file's extension).",
  enabled_by_default = true,
}
