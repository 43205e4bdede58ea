"""The run viewer: what ``luckrate serve`` shows on its page and ``luckrate grade --html`` writes to a file.

``model`` turns a graded run into the plain data both show (and the JSON API returns); ``render`` fills the
Jinja2 templates with it, every value escaped as text. Span content is attacker-controlled: nothing in it
is ever markup, a URL or a template.
"""
