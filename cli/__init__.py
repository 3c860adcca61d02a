"""kcoral command-line client: send a directory and a script to a kcoral server, stream the result back."""
