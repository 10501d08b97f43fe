"""Gradio screens built on the library's plain functions."""
