/**
 * The agent fast path answers from what it assumes the OpenAPI document says
 * about the poll and the reply; a document that says otherwise stops the API
 * at start-up instead of being answered from stale assumptions.
 */
import { assertContract } from '../../src/api/agent-fast-path';
import { loadOpenApiDocument } from '../../src/api/openapi/spec';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the document is edited loosely here
const PATH = '/v2/infra-envs/{infra_env_id}/hosts/{host_id}/instructions';

describe('assertContract', () => {
  it('accepts the document as it is, and its checks follow the document', () => {
    const c = assertContract(loadOpenApiDocument());
    expect(c.timestampMax).toBe(253402300799);
    expect(c.reply({ step_type: 'execute', step_id: 'x', exit_code: 0, output: '', error: '' })).toBe(true);
    expect(c.reply({ step_type: 'execute', step_id: 'x', exit_code: 2 ** 31 })).toBe(false);
    expect(c.reply({ step_type: 'nope', step_id: 'x' })).toBe(false);
    expect(c.reply({ step_type: 'execute', step_id: 'x', extra: 1 })).toBe(false);
    expect(c.steps({ next_instruction_seconds: 60, post_step_action: 'continue', instructions: [{ step_type: 'inventory', step_id: 'i', args: ['a'] }] })).toBe(true);
    expect(c.steps({ instructions: [{ step_type: 'inventory', args: [1] }] })).toBe(false);
    // A property set to undefined is left out of the JSON, and the response validator takes it as absent.
    expect(c.steps({ next_instruction_seconds: undefined, instructions: [{ step_type: 'install', step_id: 'i', args: undefined }] })).toBe(true);
    expect(c.reply({ step_type: 'execute', step_id: undefined })).toBe(false);
  });

  it.each<[string, (d: Doc) => void]>([
    ['a new query parameter on the poll', (d) => d.paths[PATH].get.parameters.push({ in: 'query', name: 'since', schema: { type: 'string' } })],
    ['another security scheme on the poll', (d) => d.paths[PATH].get.security.push({ userAuth: [] })],
    ['another security scheme on the reply', (d) => (d.paths[PATH].post.security = [{ userAuth: [] }])],
    ['a second media type for the reply', (d) => (d.paths[PATH].post.requestBody.content['application/x-yaml'] = { schema: { type: 'object' } })],
    ['a query parameter on the reply', (d) => (d.paths[PATH].post.parameters = [{ in: 'query', name: 'x', schema: { type: 'string' } }])],
    ['another timestamp type', (d) => (d.paths[PATH].get.parameters[0].schema = { type: 'string' })],
    ['a pattern the checker does not know', (d) => (d.components.schemas['step-reply'].properties.step_id.pattern = '^[a-z]+$')],
    ['a default the validator would fill in', (d) => (d.components.schemas['step-reply'].properties.output.default = '')],
    ['agentAuth moved to the query', (d) => (d.components.securitySchemes.agentAuth.in = 'query')],
  ])('refuses %s', (_name, edit) => {
    const doc = loadOpenApiDocument() as Doc;
    edit(doc);
    expect(() => assertContract(doc)).toThrow();
  });
});
