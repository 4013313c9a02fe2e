"""A chat template that renders tools in the Hermes/Qwen convention, for bases whose own ignores them.

SmolLM2's template drops ``tools=``, ``tool_calls`` and tool results. This one follows Qwen2.5's
(tools listed in the system message inside ``<tools>``, calls as ``<tool_call>{json}</tool_call>``,
results as ``<tool_response>`` in a user turn) with SmolLM2's default system prompt, and accepts
call arguments either as a dict or as a JSON string (the OpenAI form).
"""

from __future__ import annotations

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

HERMES_TOOL_TEMPLATE = (
    """{%- set default_system = '"""
    + DEFAULT_SYSTEM
    + """' %}
{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content }}
    {%- else %}
        {{- default_system }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n" }}
    {{- "You are provided with function signatures within <tools></tools> XML tags, one per line as "
        "name(argument: what it is, ...; '?' marks an optional one) - what the function does:\\n<tools>" }}
    {%- for tool in tools %}
        {%- set f = tool.function if tool.function is defined else tool %}
        {%- set params = f.parameters or {} %}
        {{- "\\n" + f.name + "(" }}
        {%- for pname, p in (params.properties or {}).items() %}
            {{- (", " if not loop.first else "") + pname + ("" if pname in (params.required or []) else "?") }}
            {%- if p.type in ("string", "integer", "number", "boolean") and p.properties is not defined %}
                {{- ": " + (p.description or p.type) }}
                {%- if p.type != "string" %}{{- " (" + p.type + ")" }}{%- endif %}
                {%- if p.enum is defined %}{{- ", one of " + p.enum | join("|") }}{%- endif %}
            {%- else %}
                {{- ": " + p | tojson }}
            {%- endif %}
        {%- endfor %}
        {{- ") - " + (f.description or "") }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
        "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
        "{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\n' + default_system + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' and loop.first %}
    {%- elif message.role == 'user' or message.role == 'system' %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\\n' }}
        {%- generation %}
        {{- message.content or '' }}
        {%- for tool_call in message.tool_calls or [] %}
            {%- if message.content or not loop.first %}
                {{- '\\n' }}
            {%- endif %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
            {%- if tool_call.arguments is string %}
                {{- tool_call.arguments }}
            {%- else %}
                {{- tool_call.arguments | tojson }}
            {%- endif %}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>' }}
        {%- endgeneration %}
        {{- '\\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content if message.content is string else message.content | tojson }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
)
