from interviewer.settings import SETTINGS, Settings, settings_table_markdown

from .conftest import ROOT


def test_readme_settings_table_is_generated_from_the_settings_list():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert settings_table_markdown() in readme, "README's settings table is stale: paste settings_table_markdown()"


def test_every_setting_has_a_name_default_and_help():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.help.strip() for s in SETTINGS)
    for needed in (
        "INTERVIEWER_HOME",
        "INTERVIEWER_EMBED_MODEL",
        "INTERVIEWER_DEVICE",
        "CHROMA_HOST",
        "CHROMA_PORT",
        "OPENAI_BASE_URL",
        "INTERVIEWER_LLM_MODEL",
        "OPENAI_API_KEY",
        "GRADIO_SERVER_NAME",
        "GRADIO_SERVER_PORT",
    ):
        assert needed in names


def test_environment_overrides_dotenv_and_secrets_come_from_the_environment_only(tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-from-file\nCHROMA_PORT=9001\n")
    s = Settings(env={"CHROMA_PORT": "9002"}, dotenv=dotenv)
    assert s.chroma_port == 9002
    assert s.llm_api_key == ""  # a key in a file is ignored: secrets come from the environment only
    s = Settings(env={"OPENAI_API_KEY": "sk-from-env"}, dotenv=dotenv)
    assert s.llm_api_key == "sk-from-env"
    assert "sk-from-env" not in repr(s)
    assert Settings(env={}, dotenv=None).server_name == "127.0.0.1"
