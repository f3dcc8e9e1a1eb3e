"""The `python` bench section's allow policy on the hookwire package: every
point allows. ``--unary-only`` serves it without the Multiplex stream.

    python benches/load/python_allow.py [--unary-only]   # prints PORT <n>
"""

import hookwire

if __name__ == "__main__":
    hookwire.run(hookwire.Interceptor("python-allow", "1.0.0", "every point allows"))
