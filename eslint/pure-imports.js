// @ts-check
/**
 * `landfall/pure-imports`: an allowlist of what a module may import, for the
 * code that must stay free of I/O (workflows/, which Temporal replays, and
 * src/domain/). A denylist misses whatever nobody thought of; an allowlist
 * makes every new dependency a decision. Relative imports are resolved against
 * the repository, so `../src/domain/x` is allowed from workflows/ and
 * `../db/x` is refused from src/domain/ whatever the depth.
 *
 * Options: { packages: string[], paths: string[], typePaths?: string[], globals?: string[], why: string }
 *   packages   npm packages (exact names) that may be imported
 *   paths      repository-relative files or directories that may be imported
 *   typePaths  repository-relative files or directories that may be imported with `import type` only
 *              (erased at compile time, so no code of theirs runs)
 *   globals    global names that may not be used: the I/O Node offers without an import (fetch,
 *              process, console, globalThis …), which an import allowlist alone lets through
 * A type-only import is allowed from anything `paths` or `typePaths` allows.
 */
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

/** @param {string} rel @param {string[]} list */
function under(rel, list) {
  return list.some((p) => rel === p || rel.startsWith(`${p}/`));
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'allow only listed imports in code that must do no I/O' },
    schema: [
      {
        type: 'object',
        properties: {
          packages: { type: 'array', items: { type: 'string' } },
          paths: { type: 'array', items: { type: 'string' } },
          typePaths: { type: 'array', items: { type: 'string' } },
          globals: { type: 'array', items: { type: 'string' } },
          why: { type: 'string' },
        },
        required: ['packages', 'paths', 'why'],
        additionalProperties: false,
      },
    ],
    messages: { forbidden: "'{{source}}' is not allowed here: {{why}}", forbiddenGlobal: "the global '{{name}}' is not allowed here (I/O without an import): {{why}}" },
  },
  create(context) {
    const { packages, paths, typePaths = [], globals = [], why } = context.options[0];
    const bannedGlobals = new Set(globals);
    const dir = path.dirname(context.filename);

    /** @param {import('estree').Node} node @param {unknown} value @param {boolean} typeOnly */
    function check(node, value, typeOnly) {
      if (typeof value !== 'string') {
        context.report({ node, messageId: 'forbidden', data: { source: '<computed>', why } });
        return;
      }
      let ok;
      if (value.startsWith('.')) {
        const rel = path.relative(ROOT, path.resolve(dir, value)).split(path.sep).join('/').replace(/\.(ts|js)$/, '');
        ok = under(rel, paths) || (typeOnly && under(rel, typePaths));
      } else {
        ok = packages.includes(value);
      }
      if (!ok) context.report({ node, messageId: 'forbidden', data: { source: value, why } });
    }

    /** @param {any} node */
    const typeOnlyImport = (node) => node.importKind === 'type' || (node.specifiers.length > 0 && node.specifiers.every((/** @type {any} */ s) => s.importKind === 'type'));

    return {
      ImportDeclaration: (node) => check(node, node.source.value, typeOnlyImport(node)),
      ExportNamedDeclaration: (node) => {
        if (node.source) check(node, node.source.value, /** @type {any} */ (node).exportKind === 'type');
      },
      ExportAllDeclaration: (node) => check(node, node.source.value, /** @type {any} */ (node).exportKind === 'type'),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined, false),
      // A global is a reference that no scope of the file declares: configured globals (a variable of
      // the global scope with no definition) and undeclared ones (the global scope's `through`).
      'Program:exit': (node) => {
        if (!bannedGlobals.size) return;
        const scope = context.sourceCode.getScope(node);
        /** @param {any} ref */
        const report = (ref) => {
          if (ref.isTypeReference && !ref.isValueReference) return;
          context.report({ node: ref.identifier, messageId: 'forbiddenGlobal', data: { name: ref.identifier.name, why } });
        };
        for (const v of scope.variables) if (bannedGlobals.has(v.name) && v.defs.length === 0) v.references.forEach(report);
        for (const ref of scope.through) if (bannedGlobals.has(ref.identifier.name)) report(ref);
      },
      CallExpression: (node) => {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require') {
          const arg = node.arguments[0];
          check(node, arg && arg.type === 'Literal' ? arg.value : undefined, false);
        }
      },
    };
  },
};

module.exports = { rules: { 'pure-imports': rule } };
