// toolshed's stand-in for `@opencode-ai/plugin`, used by tool files whose project has not
// installed the real package: `tool()` returns its definition and `tool.schema` is zod 4.
import { z } from "zod";

export function tool(input) {
  return input;
}
tool.schema = z;

export default { tool };
