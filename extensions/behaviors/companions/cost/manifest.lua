return {
  name = "cost",
  description = "/cost: the session's tokens and cost by model, with cache hits (prices from the catalog, docs/cost.md).",
  enabled_by_default = true,
}
