/* test_judge_manifest.c - judge/manifest.h: the two valid forms, every
 * rejection path with its message, and the on-disk loader. */
#include "judge/manifest.h"
#include "test.h"

#include <unistd.h>

static int parse(const char *text, judge_manifest *m, tempo_error *err)
{
    tempo_error_clear(err);
    return judge_manifest_parse(m, text, strlen(text), err);
}

static void test_preset_form(void)
{
    judge_manifest m;
    tempo_error err;
    CHECK(parse("{\"name\": \"tiny-1\", \"authors\": [\"Ada\", \"Alan\"], \"description\": \"d\", \"phase\": 1,"
                " \"preset\": \"cpu-default\", \"overrides\": {\"lr\": 0.003, \"n_layers\": 6, \"tied_head\": true,"
                " \"mlp\": \"relu2\"}, \"threads\": 2, \"vocab\": 1024, \"steps\": 50}",
                &m, &err) == 0);
    CHECK(strcmp(m.name, "tiny-1") == 0);
    CHECK(strcmp(m.authors, "Ada, Alan") == 0);
    CHECK(m.phase == 1 && m.threads == 2 && m.vocab == 1024 && m.steps == 50);
    CHECK(strcmp(m.preset, "cpu-default") == 0 && m.n_command == 0);
    CHECK(m.n_overrides == 4);
    CHECK(strcmp(m.overrides[0], "lr=0.003") == 0);
    CHECK(strcmp(m.overrides[1], "n_layers=6") == 0);
    CHECK(strcmp(m.overrides[2], "tied_head=true") == 0);
    CHECK(strcmp(m.overrides[3], "mlp=relu2") == 0);
    CHECK(m.ranks == 1);   /* one process unless asked */
    CHECK(parse("{\"name\": \"two\", \"authors\": [\"A\"], \"description\": \"d\", \"phase\": 2,"
                " \"preset\": \"tiny-test\", \"ranks\": 2}", &m, &err) == 0);
    CHECK(m.ranks == 2 && m.phase == 2);
}

static void test_command_forms(void)
{
    judge_manifest m;
    tempo_error err;
    CHECK(parse("{\"name\":\"c\",\"authors\":\"Bo\",\"description\":\"\",\"phase\":2,\"command\":[\"./train.sh\",\"-x\"]}",
                &m, &err) == 0);
    CHECK(m.n_command == 2 && !m.command_shell && strcmp(m.command[0], "./train.sh") == 0);
    CHECK(strcmp(m.command[1], "-x") == 0 && m.phase == 2 && strcmp(m.authors, "Bo") == 0);
    CHECK(parse("{\"name\":\"c\",\"authors\":[\"Bo\"],\"description\":\"x\",\"phase\":1,\"command\":\"python3 t.py\"}",
                &m, &err) == 0);
    CHECK(m.n_command == 1 && m.command_shell && strcmp(m.command[0], "python3 t.py") == 0);
}

static void expect_fail(const char *text, const char *needle)
{
    judge_manifest m;
    tempo_error err;
    CHECK_MSG(parse(text, &m, &err) == -1, "accepted: %s", text);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    CHECK_MSG(strncmp(err.msg, "manifest.json: ", 15) == 0, "message '%s'", err.msg);
}

#define BASE "\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":1"

static void test_rejections(void)
{
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":1,\"preset\":\"p\",\"ranks\":2}",
                "\"ranks\" above 1 is for a phase-2");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":2,\"command\":[\"x\"],\"ranks\":2}",
                "\"ranks\" above 1 is for a phase-2");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":2,\"preset\":\"p\",\"ranks\":0}",
                "ranks");
    expect_fail("{\"name\": ", "malformed JSON");
    expect_fail("[1,2]", "must be a JSON object");
    expect_fail("{\"authors\":[\"A\"],\"description\":\"d\",\"phase\":1,\"preset\":\"p\"}", "missing \"name\"");
    expect_fail("{\"name\":\"n\",\"description\":\"d\",\"phase\":1,\"preset\":\"p\"}", "missing \"authors\"");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"phase\":1,\"preset\":\"p\"}", "missing \"description\"");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"preset\":\"p\"}", "missing \"phase\"");
    expect_fail("{" BASE "}", "exactly one of");
    expect_fail("{" BASE ",\"preset\":\"p\",\"command\":[\"x\"]}", "exactly one of");
    expect_fail("{" BASE ",\"command\":[\"x\"],\"overrides\":{\"a\":1}}", "applies to a \"preset\" only");
    expect_fail("{" BASE ",\"preset\":\"p\",\"comand\":[\"x\"]}", "unknown key \"comand\"");
    expect_fail("{" BASE ",\"preset\":\"p\",\"name\":\"m\"}", "\"name\" is given twice");
    expect_fail("{\"name\":\"../x\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":1,\"preset\":\"p\"}",
                "\"name\" must be");
    expect_fail("{\"name\":\"n\",\"authors\":[],\"description\":\"d\",\"phase\":1,\"preset\":\"p\"}", "\"authors\"");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":3,\"preset\":\"p\"}",
                "\"phase\" must be an integer from 1 to 2");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":\"d\",\"phase\":1.5,\"preset\":\"p\"}", "\"phase\"");
    expect_fail("{" BASE ",\"preset\":\"../../etc/x\"}", "not a path");
    expect_fail("{" BASE ",\"preset\":\"p\",\"overrides\":{\"lr\":[1]}}", "must be a string, number or boolean");
    expect_fail("{" BASE ",\"preset\":\"p\",\"overrides\":{\"Bad Key\":1}}", "not a config key name");
    expect_fail("{" BASE ",\"preset\":\"p\",\"overrides\":{\"lr\":\"1\\n2\"}}", "control characters");
    expect_fail("{" BASE ",\"command\":[]}", "non-empty list");
    expect_fail("{" BASE ",\"command\":[\"a\",3]}", "argument 2 must be a string");
    expect_fail("{" BASE ",\"command\":[\"\"]}", "program name is empty");
    expect_fail("{" BASE ",\"command\":\"\"}", "\"command\" is empty");
    expect_fail("{" BASE ",\"command\":[\"a\"],\"threads\":0}", "\"threads\"");
    expect_fail("{" BASE ",\"command\":[\"a\"],\"vocab\":100}", "\"vocab\"");
    expect_fail("{" BASE ",\"command\":[\"a\"],\"steps\":-1}", "\"steps\"");
    expect_fail("{" BASE ",\"command\":[\"a\"],\"description\":5}", "given twice");
    expect_fail("{\"name\":\"n\",\"authors\":[\"A\"],\"description\":7,\"phase\":1,\"command\":[\"a\"]}",
                "\"description\" must be a string");
}

static void test_load(void)
{
    char dir[] = "/tmp/test_judge_manifest.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    judge_manifest m;
    tempo_error err;
    CHECK(judge_manifest_load(&m, dir, &err) == -1);
    CHECK(strstr(err.msg, "manifest.json: missing") != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{" BASE ",\"command\":[\"./t\"]}\n", f);
    fclose(f);
    CHECK(judge_manifest_load(&m, dir, &err) == 0 && strcmp(m.command[0], "./t") == 0);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    RUN(test_preset_form);
    RUN(test_command_forms);
    RUN(test_rejections);
    RUN(test_load);
    return test_summary("test_judge_manifest");
}
