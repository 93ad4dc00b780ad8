"""stamina-tui: the Textual monitor that attaches to staminad over its control socket.

`board` and `link` are free of Textual (the model and the connection); `app` wires the screens.
The package reaches the daemon only through `protocol` and the socket.
"""
