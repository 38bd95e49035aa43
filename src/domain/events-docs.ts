/** Renders docs/events.md from the event catalogue. */
import { EVENT_CATALOGUE } from './event-catalogue';

export function eventsDoc(): string {
  return [
    '# Events',
    '',
    '<!-- Generated from src/domain/event-catalogue.ts by src/domain/events-docs.ts; do not edit. Regenerate with: UPDATE_DOCS=1 npx jest test/unit/state-machines.test.ts -->',
    '',
    'Every event Landfall records, with its severity and message template. List them with `GET /api/assisted-install/v2/events` (filters, paging, `Event-Count` and `Severity-Count-*` headers) or follow them live with `GET /api/assisted-install/v2/events/stream` (Server-Sent Events). Agents also post `host_registration_diagnosis` when they got through after failing to reach the service.',
    '',
    '| name | severity | category | message | when |',
    '|---|---|---|---|---|',
    ...Object.entries(EVENT_CATALOGUE).map(([name, e]) => `| \`${name}\` | ${e.severity} | ${e.category} | ${e.template.replace(/\|/g, '\\|')} | ${e.description} |`),
    '',
  ].join('\n');
}
