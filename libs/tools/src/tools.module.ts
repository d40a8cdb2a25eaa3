import { Module } from '@nestjs/common';
import { FilesModule, SessionFiles } from '#libs/files';
import { SecretsModule } from '#libs/secrets';
import { Calculator } from './calculator.js';
import { McpAuth } from './mcp/auth.js';
import { McpConnector } from './mcp-connector.js';
import { McpOutbound } from './mcp/outbound.js';
import { McpSessionPool } from './mcp/session-pool.js';
import { ToolCatalog } from './tool-catalog.js';
import { WORKDIR_FILES, type WorkdirFiles } from './tool.types.js';
import { WebSearch } from './web-search/web-search.js';

/** The file tools read the session workdir through libs/files. */
const workdirFiles = {
  provide: WORKDIR_FILES,
  inject: [SessionFiles],
  useFactory: (files: SessionFiles): WorkdirFiles => ({
    list: async (sessionId) => (await files.list(sessionId)).map(({ id, filename, mimeType, bytes, inputId }) => ({ id, filename, mimeType, bytes, inputId })),
    readText: async (sessionId, fileId, signal) => {
      const read = await files.readText(sessionId, fileId, signal);
      if (!read) return null;
      const { id, filename, mimeType, bytes, inputId } = read.file;
      return { file: { id, filename, mimeType, bytes, inputId }, pages: read.text?.pages ?? null, totalPages: read.text?.totalPages };
    },
    parse: async (sessionId, fileId, signal) => {
      const read = await files.parse(sessionId, fileId, signal);
      if (!read) return null;
      const { id, filename, mimeType, bytes, inputId } = read.file;
      return { file: { id, filename, mimeType, bytes, inputId }, pages: read.parsed?.pages ?? null, totalPages: read.parsed?.totalPages ?? 0, pagesNotRecognised: read.parsed?.pagesNotRecognised ?? 0 };
    },
  }),
};

// AppConfig (for McpConnector) comes from the global ConfigModule.
@Module({
  imports: [FilesModule, SecretsModule],
  providers: [{ provide: Calculator, useFactory: () => new Calculator() }, McpAuth, McpOutbound, McpSessionPool, McpConnector, ToolCatalog, WebSearch, workdirFiles],
  exports: [ToolCatalog, McpConnector, WebSearch],
})
export class ToolsModule {}
