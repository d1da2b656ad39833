"""A language model as a declared, blind machine rater: it labels a round's items through any
OpenAI-compatible chat-completions server, apart from the human annotations, with every call
kept for the methods section."""
