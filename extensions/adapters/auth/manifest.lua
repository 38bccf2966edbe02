return {
  name = "auth",
  description = "Subscription logins: ChatGPT (openai-chatgpt) and GitHub Copilot (github-copilot) auth backends and providers, /login and /logout.",
  enabled_by_default = true,
}
