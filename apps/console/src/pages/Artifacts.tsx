import { useInfiniteQuery } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { problem } from '../admin-ui.js';
import { count, exact, shortId, when } from '../format.js';
import { type Artifact, downloadArtifact, type HostedEnvironment, listArtifacts } from './environment.js';
import './environment.css';

/** A size as people read it: "512 B", "3.4 KB", "1.2 MB". */
export function size(bytes: number): string {
  if (bytes < 1024) return `${count(bytes)} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A file of the tree: the latest artifact written at its path, and the earlier ones (newest first). */
export interface FileNode {
  name: string;
  path: string;
  latest: Artifact;
  older: Artifact[];
}

export interface FolderNode {
  name: string;
  path: string;
  folders: FolderNode[];
  files: FileNode[];
}

/**
 * The folders and files the artifacts' absolute paths make. A path written several times is one
 * file whose latest artifact is the newest (by `created_at`, then by list order, which is the
 * order they were written in). Leading folders that hold one folder and nothing else fold into
 * the root (`/workspace` rather than `/` › `workspace`).
 */
export function artifactTree(artifacts: Artifact[]): FolderNode {
  const byPath = new Map<string, Artifact[]>();
  for (const artifact of artifacts) byPath.set(artifact.path, [...(byPath.get(artifact.path) ?? []), artifact]);
  const root: FolderNode = { name: '/', path: '/', folders: [], files: [] };
  for (const [path, versions] of byPath) {
    const newestFirst = versions.map((artifact, index) => ({ artifact, index })).sort((a, b) => b.artifact.created_at - a.artifact.created_at || b.index - a.index).map(({ artifact }) => artifact);
    const parts = path.split('/').filter(Boolean);
    const name = parts.pop() ?? path;
    let folder = root;
    for (const part of parts) {
      let next = folder.folders.find((child) => child.name === part);
      if (!next) {
        next = { name: part, path: `${folder.path === '/' ? '' : folder.path}/${part}`, folders: [], files: [] };
        folder.folders.push(next);
      }
      folder = next;
    }
    folder.files.push({ name, path, latest: newestFirst[0]!, older: newestFirst.slice(1) });
  }
  const sort = (folder: FolderNode) => {
    folder.folders.sort((a, b) => a.name.localeCompare(b.name));
    folder.files.sort((a, b) => a.name.localeCompare(b.name));
    folder.folders.forEach(sort);
  };
  sort(root);
  let top = root;
  while (top.files.length === 0 && top.folders.length === 1) top = top.folders[0]!;
  return top;
}

const ACCESS: Record<string, string> = {
  disabled: 'disabled (no network at all)',
  restricted: 'restricted (through the egress proxy, to the allowed domains only)',
  enabled: 'enabled (public addresses, through the egress proxy)',
};

const LIMITS: [keyof NonNullable<HostedEnvironment['limits']>, string, (value: number) => string][] = [
  ['timeout_s', 'Wall time per command', (value) => `${count(value)} s`],
  ['cpu_s', 'CPU time per command', (value) => `${count(value)} s`],
  ['memory_mb', 'Memory', (value) => `${count(value)} MB`],
  ['processes', 'Processes', (value) => count(value)],
  ['disk_mb', 'Workspace size', (value) => `${count(value)} MB`],
];

function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** The environment's settings in words: network access, limits, what the workspace starts with. */
export function EnvironmentSummary({ environment }: { environment: HostedEnvironment }) {
  const network = environment.network ?? {};
  const access = network.access ?? 'disabled';
  // Names only, and setup commands counted: the resource never shows values or bodies (they may hold secrets).
  const names = environment.env_names ?? [];
  const setup = environment.setup_command_count ?? 0;
  const files = environment.files ?? [];
  return (
    <section aria-labelledby="environment-title" className="environment">
      <h2 id="environment-title">Environment</h2>
      <p className="muted">A sandboxed workspace hosted by this deployment: the agent runs commands and writes files there.</p>
      <dl className="environment-facts">
        <Fact term="Network">
          {ACCESS[access] ?? access}
          {network.allowed_domains && network.allowed_domains.length > 0 && ` · allowed: ${network.allowed_domains.join(', ')}`}
          {network.blocked_domains && network.blocked_domains.length > 0 && ` · blocked: ${network.blocked_domains.join(', ')}`}
        </Fact>
        {LIMITS.map(([key, label, show]) => (
          <Fact key={key} term={label}>
            {environment.limits?.[key] !== undefined ? show(environment.limits[key]) : 'the deployment’s default'}
          </Fact>
        ))}
        <Fact term="Setup commands">{setup === 0 ? 'none' : `${count(setup)} (run when the workspace was first made)`}</Fact>
        <Fact term="Variables set">{names.length === 0 ? 'none' : names.join(', ')}</Fact>
        {files.length > 0 && <Fact term="Files placed">{files.map((file) => file.path).join(', ')}</Fact>}
        {environment.id && (
          <Fact term="Workspace id">
            <code>{environment.id}</code>
          </Fact>
        )}
      </dl>
    </section>
  );
}

/**
 * The files the session's agent wrote, as a tree of folders; each file with its size, the turn
 * that wrote it and a download (earlier versions of a path under it). Read again with the rest of
 * the page when its event stream says something durable changed.
 */
export function ArtifactsView({ sessionId }: { sessionId: string }) {
  const artifacts = useInfiniteQuery({
    queryKey: ['artifacts', sessionId],
    queryFn: ({ pageParam, signal }) => listArtifacts(sessionId, pageParam, signal),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const [failure, setFailure] = useState<string | null>(null);
  const download = (artifact: Artifact) => {
    setFailure(null);
    downloadArtifact(artifact).catch((error: unknown) => setFailure(`${artifact.path} could not be downloaded: ${problem(error)}`));
  };
  const list = artifacts.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="artifacts-title" className="artifacts">
      <h2 id="artifacts-title">Files</h2>
      {artifacts.isError ? (
        <p role="alert" className="error">{`Could not read the files: ${problem(artifacts.error)}`}</p>
      ) : artifacts.isPending ? (
        <p aria-busy="true">Reading the files…</p>
      ) : list.length === 0 ? (
        <p className="empty">No files yet: the agent has written none.</p>
      ) : (
        <>
          <FolderView folder={artifactTree(list)} download={download} root />
          {artifacts.hasNextPage && (
            <button type="button" className="older" disabled={artifacts.isFetchingNextPage} onClick={() => void artifacts.fetchNextPage()}>
              {artifacts.isFetchingNextPage ? 'Loading more files…' : 'Load more files'}
            </button>
          )}
        </>
      )}
      <p role={failure ? 'alert' : 'status'} className={failure ? 'error' : 'muted'}>
        {failure}
      </p>
    </section>
  );
}

function FolderView({ folder, download, root = false }: { folder: FolderNode; download: (artifact: Artifact) => void; root?: boolean }) {
  const list = (
    <ul className="artifact-tree">
      {folder.folders.map((child) => (
        <li key={child.path}>
          <FolderView folder={child} download={download} />
        </li>
      ))}
      {folder.files.map((file) => (
        <li key={file.path} className="artifact-file">
          <Version artifact={file.latest} name={file.name} download={download} latest />
          {file.older.length > 0 && (
            <details className="artifact-older">
              <summary>{`${count(file.older.length)} earlier version${file.older.length === 1 ? '' : 's'}`}</summary>
              <ul className="artifact-tree">
                {file.older.map((artifact) => (
                  <li key={artifact.id}>
                    <Version artifact={artifact} name={file.name} download={download} />
                  </li>
                ))}
              </ul>
            </details>
          )}
        </li>
      ))}
    </ul>
  );
  if (root) {
    return (
      <div className="artifact-root">
        <p className="folder-name">
          <code>{folder.path}</code>
        </p>
        {list}
      </div>
    );
  }
  return (
    <details open className="artifact-folder">
      <summary className="folder-name">
        <code>{`${folder.name}/`}</code>
      </summary>
      {list}
    </details>
  );
}

function Version({ artifact, name, download, latest = false }: { artifact: Artifact; name: string; download: (artifact: Artifact) => void; latest?: boolean }) {
  return (
    <span className="artifact-version">
      <code className="artifact-name" title={artifact.path}>
        {name}
      </code>
      <span className="muted">{size(artifact.size_bytes)}</span>
      <time className="muted" dateTime={new Date(artifact.created_at * 1000).toISOString()} title={exact(artifact.created_at)}>
        {when(artifact.created_at)}
      </time>
      {artifact.turn_id && (
        <a href={`#turn-${artifact.turn_id}`} title={`Turn ${artifact.turn_id}`}>
          {`turn ${shortId(artifact.turn_id)}`}
        </a>
      )}
      <button type="button" className="small" aria-label={latest ? `Download ${artifact.path}` : `Download ${artifact.path} as of ${exact(artifact.created_at)}`} onClick={() => download(artifact)}>
        Download
      </button>
    </span>
  );
}
