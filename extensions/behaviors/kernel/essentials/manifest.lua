return {
  name = "essentials",
  description = "Kernel commands every session needs: /help and /reload.",
  enabled_by_default = true,
}
