import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { domainRefusal, EgressProxy } from '#libs/sandbox';

// A restricted network's lists name domains: an IP literal is no domain, so it cannot slip past a
// list of only blocked domains (a blocked site dialled by its address).
describe('domain lists and IP literals', () => {
  const blockedOnly = { access: 'restricted' as const, allowedDomains: [], blockedDomains: ['example.com'] };

  it('restricted refuses an IP literal (v4 and v6) even with only blocked domains', () => {
    assert.equal(domainRefusal(blockedOnly, '93.184.215.14'), '93.184.215.14 is an IP address: a restricted network reaches hosts by domain name only');
    assert.match(domainRefusal(blockedOnly, '2001:db8::1') ?? '', /is an IP address/);
    assert.match(domainRefusal({ ...blockedOnly, allowedDomains: ['github.com'] }, '140.82.112.3') ?? '', /is an IP address/);
    assert.equal(domainRefusal(blockedOnly, 'pypi.org'), null, 'names still pass a list of blocked domains');
  });

  it('reaches an address the allowed list names exactly; enabled lets addresses on to the address policy', () => {
    assert.equal(domainRefusal({ ...blockedOnly, allowedDomains: ['93.184.215.14'] }, '93.184.215.14'), null);
    assert.match(domainRefusal({ ...blockedOnly, allowedDomains: ['215.14'] }, '93.184.215.14') ?? '', /is an IP address/);
    assert.equal(domainRefusal({ access: 'enabled', allowedDomains: [], blockedDomains: [] }, '93.184.215.14'), null);
  });

  it('the proxy answers a CONNECT or request to an address with the refusal', () => {
    const proxy = new EgressProxy({ allowedHosts: [] });
    assert.deepEqual(proxy.judge(blockedOnly, '93.184.215.14:443', 443), { refusal: '93.184.215.14 is an IP address: a restricted network reaches hosts by domain name only' });
    assert.deepEqual(proxy.judge(blockedOnly, '[2001:db8::1]:443', 443), { refusal: '2001:db8::1 is an IP address: a restricted network reaches hosts by domain name only' });
    assert.deepEqual(proxy.judge(blockedOnly, 'pypi.org:443', 443), { host: 'pypi.org', port: 443, allowPrivate: false });
  });
});
