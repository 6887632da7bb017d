"""The browser edition: the bundled models exported for a static site (lab.web.export)."""
